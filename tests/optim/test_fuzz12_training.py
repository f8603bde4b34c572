"""A differential fuzz of training (round 12): optimizers, loss scaling, master weights, ``sa.random``, ``sa.nn``.

On the test meshes (1, 2x2, 4, 2x2x2, 3x2), uneven and empty blocks:

* ``sa.optim`` (SGD, momentum, Nesterov, weight decay, Adam/AdamW, cosine schedules, a step counted on the devices,
  ``clip_by_global_norm``, ``DynamicLossScale`` with inf/NaN steps skipped, master copies in float32, float64 or
  none) for a few steps against a float64 NumPy reference of the documented update, on trees mixing named and
  positional float32/float16/bfloat16 leaves; positional gradients come with other dim names than their
  parameters (``w.T.T``, ``xp.reshape``: positional arrays pair by axis). Parameters and state keep their kinds,
  dims, layouts and dtypes, an update with gradients in the parameters' layouts communicates nothing, clipping and
  unscaling one allreduce of one float64 each.
* ``sa.random``: every distribution and dtype gives the same values on every mesh and layout (and backend: the
  draw is compared with one on a NumPy 1-device mesh), in range; bad arguments raise typed errors.
* ``sa.nn``: the reference transformer's logits under every named strategy and ``"auto"`` equal the 1-device ones,
  and its gradients equal central differences.

``FUZZ12_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples (``HYPOTHESIS_PROFILE=explore`` draws new ones).
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
from gradcheck import check_grad
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind
from shardarray.layout import block_bounds

# ruff: noqa: B023 (the lambdas given _comm() are called at once, inside the loop that binds their variables)

ENV = "FUZZ12_EXAMPLES"
BF16 = np.dtype(ml_dtypes.bfloat16)
WIDE = {"float16": np.float32, "bfloat16": np.float32, "float32": np.float32, "float64": np.float64}


def _dt(name: str) -> np.dtype:
    return BF16 if name == "bfloat16" else np.dtype(name)


def _f64(x) -> np.ndarray:
    return np.asarray(x.numpy()).astype(np.float64)


def _round(a: np.ndarray, dtype: str) -> np.ndarray:
    return np.asarray(a).astype(_dt(dtype)).astype(np.float64)


def _comm(fn):
    """``(fn(), the collectives it issued over more than one device)``."""
    with sa.comm_log() as log:
        out = fn()
    return out, [r for r in log.records if r.group_size > 1]


# ============================================================================================== optimizers

OPTIMIZERS = {
    "sgd": lambda lr, md: sa.optim.SGD(lr=lr, master_dtype=md),
    "sgd_wd": lambda lr, md: sa.optim.SGD(lr=lr, weight_decay=0.3, master_dtype=md),
    "momentum": lambda lr, md: sa.optim.SGD(lr=lr, momentum=0.8, weight_decay=0.1, master_dtype=md),
    "nesterov": lambda lr, md: sa.optim.SGD(lr=lr, momentum=0.7, nesterov=True, weight_decay=0.2, master_dtype=md),
    "adam": lambda lr, md: sa.optim.Adam(lr=lr, b1=0.8, b2=0.9, eps=1e-3, master_dtype=md),
    "adamw": lambda lr, md: sa.optim.Adam(lr=lr, weight_decay=0.2, eps=1e-3, master_dtype=md),
}


def _reference(opt, p: np.ndarray, g: np.ndarray, s: dict, step: int) -> np.ndarray:
    """One step of ``opt``'s documented update in float64; ``s`` holds the moments (updated in place)."""
    lr = float(opt.lr(step)) if callable(opt.lr) else opt.lr
    if isinstance(opt, sa.optim.SGD):
        d = g
        if opt.momentum:
            s["v"] = opt.momentum * s.get("v", 0.0) + g
            d = g + opt.momentum * s["v"] if opt.nesterov else s["v"]
        return p * (1.0 - lr * opt.weight_decay) - lr * d
    s["m"] = opt.b1 * s.get("m", 0.0) + (1 - opt.b1) * g
    s["v"] = opt.b2 * s.get("v", 0.0) + (1 - opt.b2) * g * g
    m_hat, v_hat = s["m"] / (1 - opt.b1**step), s["v"] / (1 - opt.b2**step)
    return p - lr * (m_hat / (np.sqrt(v_hat) + opt.eps) + opt.weight_decay * p)


#: the leaves: name, dims, positional
LEAVES = (("w", ("i", "j"), False), ("b", ("k",), True), ("m", ("r", "c"), True), ("s", (), False))


def _working(dtype: str, master: str | None) -> str:
    """The dtype of a parameter's update arithmetic (its master copy's, or float32 for 16-bit parameters)."""
    if master is not None and np.dtype(master).itemsize > _dt(dtype).itemsize:
        return master
    return "float32" if dtype in ("float16", "bfloat16") else dtype


def _place(draw, mesh, a: np.ndarray, dims: tuple, positional: bool, layout=None, rename: bool = False):
    """``a`` on ``mesh`` (in ``layout``, else a random one), named or positional; ``rename``: a positional array
    with other dim names than ``dims`` (as ``w.T.T`` or ``xp.reshape`` make them)."""
    lay = draw(layouts(mesh, dims)) if layout is None else layout
    names = tuple(f"z{n}" for n in range(len(dims))) if rename else dims
    x = sa.asarray(a, dims=names, mesh=mesh, layout={names[dims.index(d)]: v for d, v in lay.items()})
    return as_kind(x, xp.Array) if positional and dims else x


@fuzz(30, ENV)
@given(mesh=meshes(), data=st.data())
def test_fuzz_optimizers_on_mixed_trees_match_float64_numpy(mesh, data):
    draw = data.draw
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    name = draw(st.sampled_from(sorted(OPTIMIZERS)))
    lr = draw(st.sampled_from([0.05, sa.optim.cosine_schedule(0.1, 4, warmup=1)]))
    master = draw(st.sampled_from(["float32", "float32", None, "float64"]))
    opt = OPTIMIZERS[name](lr, master)
    mode = draw(st.sampled_from(["plain", "clip", "scale", "scale_clip"]))
    on_device = draw(st.booleans())  # the step a 0-d array (as sa.graphed counts it)
    shapes = {"w": (draw(st.integers(0, 7)), draw(st.integers(1, 5))), "b": (draw(st.integers(0, 9)),)}
    shapes |= {"m": (draw(st.integers(1, 4)), draw(st.integers(0, 5))), "s": ()}
    dtypes = {n: draw(st.sampled_from(["float32", "float16", "bfloat16", "float64"])) for n, _, _ in LEAVES}
    # the gradients' dtypes: the parameters' (as sa.value_and_grad gives them), or float32 (computed apart)
    gtypes = {n: draw(st.sampled_from([dtypes[n], "float32"])) for n in dtypes}
    lays = {n: draw(layouts(mesh, dims)) for n, dims, _ in LEAVES}
    start = {n: rng.standard_normal(shapes[n]) for n in shapes}
    params = {n: _place(draw, mesh, start[n].astype(_dt(dtypes[n])), d, pos, lays[n]) for n, d, pos in LEAVES}
    state, comm = _comm(lambda: opt.init(params))
    assert not comm, f"opt.init communicated: {comm}"
    if on_device:
        state["step"] = sa.asarray(np.int64(0), mesh=mesh)
    scaler = sa.optim.DynamicLossScale(init_scale=8.0, growth_interval=2) if mode.startswith("scale") else None
    ls = scaler.init() if scaler else None
    max_norm = draw(st.sampled_from([0.5, 3.0, 100.0])) if mode.endswith("clip") else None
    bad_step = draw(st.sampled_from([None, 2, 3])) if scaler else None
    # the reference: each parameter's working value (its master copy's, or itself) in float64
    ref = {n: _round(start[n], dtypes[n]) for n in shapes}
    moments: dict = {n: {} for n in shapes}
    done = good = 0
    for step in range(1, 4):
        g_ref = {n: _round(rng.standard_normal(shapes[n]), gtypes[n]) for n in shapes}
        same = draw(st.booleans())  # the grads in their parameters' layouts (else random ones)
        rename = draw(st.booleans())

        def grads_of(values, same=same, rename=rename):
            return {
                n: _place(
                    draw, mesh, values[n].astype(_dt(gtypes[n])), d, pos, lays[n] if same else None, rename and pos
                )
                for n, d, pos in LEAVES
            }

        before = {n: (type(x), x.dims, x.layout, x.dtype) for n, x in params.items()}
        if mode == "clip":
            given_grads = grads_of(g_ref)
            (grads, norm), comm = _comm(lambda: sa.optim.clip_by_global_norm(given_grads, max_norm, return_norm=True))
            assert [(r.op, r.elements) for r in comm] == ([("allreduce", 1)] if mesh.size > 1 else [])
            want = math.sqrt(sum(float((g * g).sum()) for g in g_ref.values()))
            assert norm == pytest.approx(want, rel=1e-12)
            factor = min(1.0, max_norm / want) if want else 1.0
            for n in shapes:
                np.testing.assert_allclose(_f64(grads[n]), g_ref[n] * factor, rtol=1e-2, atol=1e-30)
            g_ref = {n: _f64(grads[n]) for n in shapes}  # (clipped, rounded to the grads' dtypes)
        if scaler is None:
            grads = grads if mode == "clip" else grads_of(g_ref)
            (params, state), comm = _comm(lambda: opt.update(params, grads, state))
            assert not same or not comm, f"an update in the params' layouts communicated: {comm}"
            applied = True
        else:
            s = ls["scale"]
            scaled = {n: g_ref[n] * s for n in shapes}  # (a power of 2: exact, and unscaled exactly)
            bad = step == bad_step and shapes["b"][0] > 0
            if bad:
                scaled["b"][rng.integers(shapes["b"][0])] = draw(st.sampled_from([np.inf, -np.inf, np.nan]))
            old_state = state
            (params, state, ls), comm = _comm(lambda: scaler.apply(opt, params, grads_of(scaled), state, ls, max_norm))
            good = 0 if bad else good + 1
            want_scale = s / 2 if bad else s * 2 if good == 2 else s
            good %= 2
            assert ls["finite"] is (not bad) and ls["scale"] == want_scale and ls["good_steps"] == good
            if same:
                assert all(r.op == "allreduce" and r.elements == 1 for r in comm) and len(comm) <= 2, comm
            applied = not bad
            if bad:
                assert state is old_state
            elif max_norm is not None:
                norm = math.sqrt(sum(float((g * g).sum()) for g in g_ref.values()))
                f = min(1.0, max_norm / norm) if norm else 1.0
                g_ref = {  # (scaled by f / s in float32 at least, rounded to each dtype: reduce_tree._times)
                    n: _round(
                        (scaled[n].astype(_dt(gtypes[n])).astype(WIDE[gtypes[n]]) * WIDE[gtypes[n]](f / s)),
                        gtypes[n],
                    )
                    for n in shapes
                }
        assert {n: (type(x), x.dims, x.layout, x.dtype) for n, x in params.items()} == before
        if applied:
            done += 1
            for n in shapes:
                new = _reference(opt, ref[n], g_ref[n], moments[n], done)
                keeps = master is not None and np.dtype(master).itemsize > _dt(dtypes[n]).itemsize
                ref[n] = new if keeps or dtypes[n] not in ("float16", "bfloat16") else _round(new, dtypes[n])
    step_now = int(state["step"].numpy()) if on_device else state["step"]
    assert step_now == done
    copies = state["master"] or {}
    for (n, dims, pos), path in zip(LEAVES, ("['w']", "['b']", "['m']", "['s']")):
        x, dt = params[n], dtypes[n]
        assert type(x) is (xp.Array if pos and dims else sa.ShardArray) and x.dtype == _dt(dt)
        assert x.dims == dims and x.shape == shapes[n] and x.layout == before[n][2]
        keeps = master is not None and np.dtype(master).itemsize > _dt(dt).itemsize
        moments_of = [state[k][n] for k in ("m", "v", "velocity") if state.get(k) is not None]
        for leaf in moments_of + ([copies[path]] if keeps else []):
            assert type(leaf) is type(x) and leaf.dims == x.dims and leaf.layout == x.layout
            assert leaf.dtype == np.dtype(_working(dt, master))
        assert keeps == (path in copies)
        working = copies[path] if keeps else x
        wd = working.dtype.name
        if wd == "float64":
            tol = 1e-12
        elif wd == "float32":
            tol = 2e-5
        else:  # a 16-bit parameter updated in place (master_dtype=None): an ulp or two of its dtype
            tol = 2e-3 if dt == "float16" else 1.6e-2
        err = f"{name} {mode} master={master} {n} {dt}"
        np.testing.assert_allclose(_f64(working), ref[n], rtol=tol, atol=tol, err_msg=err)
        np.testing.assert_allclose(_f64(x), _round(ref[n], dt), rtol=2e-2, atol=2e-2, err_msg=err)


def test_positional_grads_pair_with_their_params_by_axis():
    """A positional gradient whose dim names differ from its parameter's (``g.T.T``, ``xp.reshape``: internal
    names) updates it, as NumPy's and optax's updates pair arrays by axis; the update raised DimensionError."""
    mesh = _mesh({"row": 2, "col": 2})
    w = as_kind(sa.asarray(np.arange(6.0).reshape(2, 3), dims=("a", "b"), mesh=mesh, layout={"a": "row"}), xp.Array)
    g = xp.reshape(as_kind(sa.asarray(np.ones(6), dims=("n",), mesh=mesh, layout={"n": "col"}), xp.Array), (2, 3))
    assert g.dims != w.dims and g.mesh is mesh
    for opt in (sa.optim.SGD(lr=0.5, momentum=0.5), sa.optim.Adam(lr=0.5)):
        new, state = opt.update(w, g, opt.init(w))
        assert type(new) is xp.Array and new.dims == w.dims and new.layout == w.layout
        np.testing.assert_allclose(new.numpy(), np.arange(6.0).reshape(2, 3) - 0.5)
        new, _ = opt.update(new, g.T.T, state)  # the moments of w, the grads named otherwise
    with pytest.raises(sa.DimensionError, match=r"shape \(3, 2\).*shape \(2, 3\)"):
        sa.optim.SGD(lr=0.5).update(w, g.T, {"step": 0, "velocity": None, "master": None})
    named = sa.asarray(np.ones((2, 3)), dims=("a", "b"), mesh=mesh, layout={"b": "col"})
    new, _ = sa.optim.SGD(lr=0.5).update(named, named.transpose(("b", "a")), {"step": 0, "velocity": None})
    assert new.dims == ("a", "b") and new.layout == {"b": ("col",)}
    np.testing.assert_allclose(new.numpy(), 0.5)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_loss_scale_value_and_grad_of_a_float16_loss_returns_the_unscaled_loss():
    """A float16 loss of 2.25 under the default scale 2**15: the scaled loss (73728) is beyond float16, so the loss
    returned came back inf although the gradients were finite and the step applied; it is scaled in float32 now."""
    mesh = _mesh({"row": 2, "col": 2})
    w = {"w": sa.full(mesh, {"i": 1000}, 1.5, dtype="float16", layout={"i": ("row", "col")})}
    scaler, opt = sa.optim.DynamicLossScale(), sa.optim.SGD(lr=0.01)
    ls, state = scaler.init(), opt.init(w)
    loss, grads = scaler.value_and_grad(lambda p: (p["w"] * p["w"]).mean())(ls, w)
    assert loss.dtype == np.float16 and float(loss) == 2.25
    assert grads["w"].dtype == np.float16 and grads["w"].layout == w["w"].layout
    np.testing.assert_allclose(_f64(grads["w"]), 3.0 / 1000 * 2**15, rtol=1e-3)
    w, state, ls = scaler.apply(opt, w, grads, state, ls)
    assert ls["finite"] is True
    np.testing.assert_allclose(_f64(w["w"]), 1.5 - 0.01 * 3.0 / 1000, rtol=1e-3)
    with pytest.raises(sa.DTypeError, match=r"fn must return the loss, a 0-d ShardArray; got tuple"):
        scaler.value_and_grad(lambda p: ((p["w"] * p["w"]).mean(), 1))(ls, w)  # (TypeError: tuple * float)
    with pytest.raises(sa.DTypeError, match=r"opt must be an optimizer.*got dict"):
        scaler.apply(state, w, grads, state, ls)  # (the arguments out of order: a skipped step raised nothing)
    p = as_kind(sa.asarray(np.arange(3.0), dims=("a",), mesh=mesh, layout={"a": "col"}), xp.Array)
    loss, g = scaler.value_and_grad(lambda q: xp.sum(q * q))(ls, p)  # positional: kept, float64: as it was
    assert type(loss) is xp.Array and float(loss) == 5.0 and type(g) is xp.Array
    np.testing.assert_array_equal(g.numpy(), 2 * np.arange(3.0) * ls["scale"])


# ============================================================================================== sa.random

DISTRIBUTIONS = {
    "uniform": (sa.random.uniform, ("bfloat16", "float16", "float32", "float64")),
    "normal": (sa.random.normal, ("bfloat16", "float16", "float32", "float64")),
    "randint": (sa.random.randint, ("int8", "uint8", "int32", "int64", "uint64")),
}


@st.composite
def _draw_args(draw, kind: str, dtype: str) -> tuple:
    if kind == "uniform":
        lo = draw(st.sampled_from([0.0, -1.0, 1.0, 5.5]))
        return (lo, lo + draw(st.sampled_from([1.0, 0.001, -2.0, 0.0]))), {}
    if kind == "normal":
        return (), {"mean": draw(st.sampled_from([0.0, -3.0])), "std": draw(st.sampled_from([1.0, 0.0, 2.5]))}
    info = np.iinfo(dtype)
    lo = draw(st.integers(max(int(info.min), -100), 50))
    hi = draw(st.sampled_from([lo + 1, lo + 7, min(int(info.max) + 1, lo + 300)]))
    return ((lo, hi) if draw(st.booleans()) or lo <= 0 else (lo,)), {}


@fuzz(50, ENV)
@given(mesh=meshes(), data=st.data())
def test_fuzz_random_draws_equal_on_every_mesh_layout_and_backend(mesh, data):
    draw = data.draw
    kind = draw(st.sampled_from(sorted(DISTRIBUTIONS)))
    fn, dtypes = DISTRIBUTIONS[kind]
    dtype = draw(st.sampled_from(dtypes))
    dims = ("i", "j", "k")[: draw(st.integers(0, 3))]
    sizes = {d: draw(st.sampled_from([0, 1, 3, 5, 8])) for d in dims}
    args, kwargs = draw(_draw_args(kind, dtype))
    seed = draw(st.sampled_from([0, 7, -1, 2**64 - 1, 2**63]))
    lay = draw(layouts(mesh, dims))
    x = fn(mesh, sizes, *args, seed=seed, dtype=dtype, layout=lay, **kwargs)
    one = fn(sa.Mesh({"one": 1}, backend="numpy"), sizes, *args, seed=seed, dtype=dtype, **kwargs)
    assert type(x) is sa.ShardArray and x.sizes == sizes and x.layout == {d: tuple(a) for d, a in lay.items() if a}
    assert x.dtype == _dt(dtype) and one.dtype == x.dtype
    pos = xp.asarray(x)  # the positional view: the same blocks
    assert type(pos) is xp.Array and pos.shape == x.shape and pos.layout == x.layout and pos.shards is x.shards
    got, want = np.asarray(x.numpy()), np.asarray(one.numpy())
    np.testing.assert_array_equal(got.reshape(-1).view(np.uint8), want.reshape(-1).view(np.uint8))  # bit for bit
    v = got.astype(np.float64) if kind != "randint" else got.astype(object)
    if kind == "uniform":  # (the bounds drawn are values of every dtype)
        lo, hi = args
        assert ((v >= lo) & (v < hi) if hi > lo else (v > hi) & (v <= lo) if hi < lo else v == lo).all()
        varied = abs(hi - lo) >= 1
    elif kind == "randint":
        lo, hi = args if len(args) == 2 else (0, args[0])
        assert ((v >= lo) & (v < hi)).all()
        varied = hi - lo >= 7
    else:
        assert kwargs["std"] or (v == kwargs["mean"]).all()
        varied = kwargs["std"] > 0
    if math.prod(sizes.values()) >= 8 and varied:
        other = fn(mesh, sizes, *args, seed=seed + 1 if seed < 2**64 - 1 else 0, dtype=dtype, layout=lay, **kwargs)
        assert (np.asarray(other.numpy()) != got).any()  # another seed, other values


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda m: sa.random.uniform(m, {"i": 3}, seed=2**64), sa.ArgumentError, r"uniform.*seed=18446744073709551616"),
        (
            lambda m: sa.random.normal(m, {"i": 3}, seed=-(2**63) - 1),
            sa.ArgumentError,
            r"normal.*\[-2\*\*63, 2\*\*64\)",
        ),
        (lambda m: sa.random.randint(m, {"i": 3}, 0, 5, seed=2**70), sa.ArgumentError, r"randint.*seed"),
        (lambda m: sa.random.uniform(m, {"i": 3}, seed=1.0), sa.DTypeError, r"uniform: seed must be an integer"),
        (lambda m: sa.random.normal(m, {"i": 3}, std=-1.0), sa.ArgumentError, r"std >= 0"),
        (lambda m: sa.random.normal(m, {"i": 3}, dtype="int32"), sa.DTypeError, r"not a float dtype"),
        (lambda m: sa.random.uniform(m, {"i": 3}, 0, np.inf), sa.ArgumentError, r"finite"),
        (lambda m: sa.random.uniform(m, {"i": 3}, 0, 1e6, dtype="float16"), sa.ArgumentError, r"overflows float16"),
        (lambda m: sa.random.randint(m, {"i": 3}, 0, 0), sa.ArgumentError, r"high > low"),
        (lambda m: sa.random.randint(m, {"i": 3}, 0), sa.ArgumentError, r"high=None and low=0: \[0, 0\)"),
        (lambda m: sa.random.randint(m, {"i": 3}, 0, 300, dtype="uint8"), sa.ArgumentError, r"\[0, 300\).*uint8"),
        (lambda m: sa.random.randint(m, {"i": 3}, 0, 5, dtype="float32"), sa.DTypeError, r"integer dtype"),
        (lambda m: sa.random.uniform(m, {"i": -1}), sa.DimensionError, r"'i'.*>= 0"),
        (lambda m: sa.random.uniform(m, [3]), sa.DimensionError, r"dict"),
        (lambda m: sa.random.uniform({"a": 2}, {"i": 3}), sa.MeshError, r"sa.Mesh"),
        (lambda m: sa.random.normal(m, {"i": 3}, layout={"j": "row"}), sa.LayoutError, r"'j'"),
    ],
)
def test_random_bad_arguments_raise_typed_errors(call, error, match):
    with pytest.raises(error, match=match):
        call(_mesh({"row": 2, "col": 2}))


def test_random_regressions():
    """Seeds beyond 64 bits drew what ``seed % 2**64`` draws (``2**64`` gave seed 0's values); ``dtype=None`` gave
    float64 (and randint refused it) where the default is float32 (int64); ``randint(low)`` without ``high`` raised
    TypeError where NumPy's ``integers(low)`` draws [0, low); a float16 uniform in [1, 1.001) never drew
    1.0009765625, which lies inside (``high`` rounds to it, and every sample that rounded there was moved down)."""
    mesh = _mesh({"row": 2, "col": 2})
    for fn, args in ((sa.random.uniform, ()), (sa.random.normal, ()), (sa.random.randint, (0, 100))):
        with pytest.raises(sa.ArgumentError, match="seed"):
            fn(mesh, {"i": 4}, *args, seed=2**64)
        same = fn(mesh, {"i": 4}, *args, seed=-1).numpy() == fn(mesh, {"i": 4}, *args, seed=2**64 - 1).numpy()
        assert same.all()  # a negative seed is its 64-bit two's complement (as JAX's int64 seeds)
    assert sa.random.uniform(mesh, {"i": 2}, dtype=None).dtype == np.float32
    assert sa.random.normal(mesh, {"i": 2}, dtype=None).dtype == np.float32
    assert sa.random.randint(mesh, {"i": 2}, 0, 3, dtype=None).dtype == np.int64
    r = sa.random.randint(mesh, {"i": 200}, 3, seed=1, layout={"i": "col"}).numpy()
    assert set(np.unique(r)) == {0, 1, 2}
    u = sa.random.uniform(mesh, {"i": 400}, 1.0, 1.001, dtype="float16", layout={"i": "row"}).numpy()
    assert set(np.unique(u).astype(np.float64)) == {1.0, 1.0009765625}
    u = sa.random.uniform(mesh, {"i": 400}, 1.001, 1.0, dtype="float16").numpy()  # (high, low]: never high itself
    assert set(np.unique(u).astype(np.float64)) == {1.0009765625}
    b = sa.random.uniform(mesh, {"i": 4000}, 0.0, 1.0, dtype="bfloat16").numpy().astype(np.float64)
    assert b.max() == 1 - 2**-8 and b.min() >= 0
    with warnings.catch_warnings():  # samples beyond float16 round to inf, as documented (NumPy's cast warned)
        warnings.simplefilter("error")
        big = sa.random.normal(mesh, {"i": 3}, 1e5, 1.0, dtype="float16", layout={"i": "row"}).numpy()
    assert (big == np.inf).all()
    cfg = sa.nn.TransformerConfig(vocab=5, d_model=2, heads=1, d_kv=2, d_ff=2, n_layers=0, seq_len=2)
    with pytest.raises(sa.ArgumentError, match="seed"):
        sa.nn.init_transformer(cfg, mesh, seed=2**64)
    a = sa.nn.init_transformer(cfg, mesh, seed=-1)["embed"].numpy()
    np.testing.assert_array_equal(a, sa.nn.init_transformer(cfg, mesh, seed=2**64 - 1)["embed"].numpy())


# ============================================================================================== sa.nn


@fuzz(30, ENV)
@given(mesh=meshes(), data=st.data())
def test_fuzz_pattern_arrays_give_each_device_its_rows(mesh, data):
    """Each device's block of ``pattern_arrays`` is its rows (and columns) of ``pattern_rows``: uneven and empty
    batches, a split ``seq``, replicas over the axes that split nothing."""
    seed, step = data.draw(st.integers(0, 2**40)), data.draw(st.integers(0, 50))
    batch, seq = data.draw(st.sampled_from([0, 1, 3, 5, 7])), data.draw(st.integers(1, 5))
    lay = data.draw(layouts(mesh, ("batch", "seq")))
    tokens, targets = sa.nn.data.pattern_arrays(mesh, seed, step, batch, seq, 11, layout=lay)
    want_tok, want_tgt = sa.nn.data.pattern_rows(seed, step, 0, batch, seq, 11)
    assert tokens.layout == targets.layout == {d: tuple(a) for d, a in lay.items() if a}
    assert tokens.dtype == targets.dtype == np.int64 and tokens.sizes == {"batch": batch, "seq": seq}
    for d, ((lo, hi), (s0, s1)) in enumerate(block_bounds(mesh, tokens.spec)):
        np.testing.assert_array_equal(mesh.backend.to_numpy(tokens.shards[d]), want_tok[lo:hi, s0:s1])
        np.testing.assert_array_equal(mesh.backend.to_numpy(targets.shards[d]), want_tgt[lo:hi, s0:s1])
    np.testing.assert_array_equal(tokens.numpy(), want_tok)
    assert (want_tok[:, 1:] == want_tgt[:, :-1]).all() and ((0 <= want_tok) & (want_tok < 11)).all()


_CFG = sa.nn.TransformerConfig(vocab=7, d_model=4, heads=2, d_kv=3, d_ff=5, n_layers=1, seq_len=3)
_BATCH = 5  # (uneven over every batch split)

STRATEGY_MESHES = [
    ("replicated", {"r": 2, "c": 2}),
    ("data", {"r": 3, "c": 2}),
    ("megatron", {"model": 3, "data": 2}),
    ("mesh2d", {"rows": 2, "cols": 3}),
    ("tesseract", {"row": 2, "col": 2, "dep": 2}),
    ("auto", {"a": 3}),
]


def _model(mesh: sa.Mesh, strategy: str | None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kw = {"batch": _BATCH} if strategy == "auto" else {}
        params = sa.nn.init_transformer(_CFG, mesh, strategy=strategy, seed=3, dtype="float64", **kw)
    rules = mesh.rules if strategy in (None, "auto") else sa.nn.strategy_rules(strategy, mesh)
    lay = {d: a for d, a in rules.items() if d in ("batch", "seq")}
    tokens, targets = sa.nn.data.pattern_arrays(mesh, 1, 0, _BATCH, _CFG.seq_len, _CFG.vocab, layout=lay)
    return params, tokens, targets


@pytest.mark.parametrize(("strategy", "shape"), STRATEGY_MESHES)
def test_transformer_strategies_equal_one_device_and_finite_differences(strategy, shape, capsys):
    params, tokens, targets = _model(sa.Mesh(shape), strategy)
    ref, ref_tokens, _ = _model(_mesh({"one": 1}), None)
    for k, v in params.items():
        np.testing.assert_array_equal(v.numpy(), ref[k].numpy())  # the same seed: the same values
    np.testing.assert_array_equal(tokens.numpy(), ref_tokens.numpy())
    logits = sa.nn.transformer_logits(params, tokens, _CFG)
    want = sa.nn.transformer_logits(ref, ref_tokens, _CFG)
    np.testing.assert_allclose(logits.numpy(), want.numpy(), rtol=1e-12, atol=1e-13)
    check_grad(lambda p: sa.nn.transformer_loss(p, tokens, targets, _CFG), params, rtol=1e-5, atol=1e-8)


def test_nn_layers_refuse_bad_weights_and_eps_with_typed_errors():
    """``attention``/``mlp`` with a wrong prefix raised KeyError (a list of weights: TypeError), and ``layer_norm``
    with a negative eps returned NaN with a RuntimeWarning; now typed errors that name the key or the eps."""
    mesh = _mesh({"row": 2, "col": 2})
    params = sa.nn.init_transformer(_CFG, mesh, seed=0, dtype="float64")
    x = sa.random.normal(mesh, {"batch": 2, "seq": 3, "d_model": 4}, dtype="float64", layout={"batch": "row"})
    with pytest.raises(sa.DimensionError, match=r"'layer7\.attn\.wq'.*'layer0\.attn\.'"):
        sa.nn.attention(x, params, "layer7.attn.")
    with pytest.raises(sa.DimensionError, match=r"'mlp\.w_in'"):
        sa.nn.mlp(x, params, "mlp.")
    with pytest.raises(sa.DTypeError, match=r"dict of parameters"):
        sa.nn.attention(x, [params], "layer0.attn.")
    with pytest.raises(sa.DTypeError, match=r"p\['layer0\.mlp\.b_in'\] must be a ShardArray"):
        sa.nn.mlp(x, {**params, "layer0.mlp.b_in": 0.0}, "layer0.mlp.")
    with pytest.raises(sa.DimensionError, match=r"mlp: x must have the dim\(s\) \['batch'\]"):
        sa.nn.mlp(x.rename({"batch": "b"}), params, "layer0.mlp.")
    with pytest.raises(sa.LayoutError, match=r"unknown strategy 'tesseact' \(did you mean 'tesseract'\?\)"):
        sa.nn.param_layout("tesseact", "layer0.mlp.w_in", ("d_model", "d_ff"), {"d_ff": "col"})
    gain, bias = params["ln_f.gain"], params["ln_f.bias"]
    for eps in (-1e-5, float("nan"), float("inf"), "1e-5", True):
        with pytest.raises((sa.ArgumentError, sa.DTypeError), match=r"layer_norm\(eps="):
            sa.nn.layer_norm(x, gain, bias, eps=eps)
    y = sa.nn.layer_norm(x, gain, bias, eps=0)  # eps = 0: allowed
    a = x.numpy()
    want = (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True))
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-10, atol=1e-12)
    assert sa.nn.mlp(x, params, "layer0.mlp.").sizes == x.sizes


def test_zeros_and_ones_with_dtype_none_are_the_default_float32():
    """``sa.zeros(mesh, sizes, dtype=None)`` was int64 (``full``'s None takes the fill value's type); None is the
    default dtype, float32, as for ``sa.random``."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    for make in (sa.zeros, sa.ones):
        assert make(mesh, {"i": 2}, dtype=None).dtype == np.float32
        assert make(mesh, {"i": 2}).dtype == np.float32


def test_global_norm_of_tiny_gradients_does_not_underflow():
    """Gradients of about 1e-170: their float64 squares underflow to 0, and the norm was 0 (so clipping saw no
    gradient); they are now summed scaled by the largest magnitude, as overflowing ones were."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = np.array([6.165994990956604e-170, -3e-171, 0.0, 1e-160])
    g = {"g": sa.asarray(a, dims=("i",), mesh=mesh, layout={"i": "row"})}
    want = float(np.max(np.abs(a)) * np.sqrt(np.sum((a / np.max(np.abs(a))) ** 2)))
    assert math.isclose(sa.optim.global_norm(g), want, rel_tol=1e-12)
    _, norm = sa.optim.clip_by_global_norm(g, 1.0, return_norm=True)
    assert math.isclose(norm, want, rel_tol=1e-12)
