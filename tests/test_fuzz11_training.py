"""A differential fuzz of training on every layout: optimizers, checkpoints and the ``sa.nn`` layers (round 11).

On the test meshes (1, 2x2, 4, 2x2x2, 3x2), uneven and empty blocks, named and positional leaves:

* ``sa.optim`` (SGD, momentum, Nesterov, weight decay, Adam/AdamW, cosine schedules, ``clip_by_global_norm``,
  float32 master copies of float16/bfloat16 parameters) for several steps against a NumPy float64 reference of the
  documented update on the gathered arrays, with gradients in other layouts than their parameters; parameters and
  state keep their kinds, dims, layouts and dtypes; the params and state saved on one mesh and loaded onto another
  mesh and layout continue training as the original does.
* ``sa.checkpoint``: bfloat16/float16/bool/int/uint8 leaves, 0-d and 0-size arrays, named and positional targets in
  random layouts on another mesh, upcasts under ``casting="same_kind"``, bit-exact values; missing and extra keys
  raise ``sa.CheckpointError`` naming the key.
* ``sa.nn``: ``cross_entropy``, ``accuracy`` and ``layer_norm`` values and gradients on split layouts equal the
  1-device run; ``init_transformer`` under every named strategy and ``"auto"`` trains its first steps as the
  1-device run does.

``FUZZ11_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples (``HYPOTHESIS_PROFILE=explore`` draws new ones).
"""

from __future__ import annotations

import math
import threading
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

ENV = "FUZZ11_EXAMPLES"
BF16 = np.dtype(ml_dtypes.bfloat16)


def _np_dtype(name: str) -> np.dtype:
    return BF16 if name == "bfloat16" else np.dtype(name)


def _f64(x) -> np.ndarray:
    return np.asarray(x.numpy()).astype(np.float64)


@st.composite
def _placed(draw, mesh, a: np.ndarray, dims: tuple, positional: bool | None = None):
    """``a`` on ``mesh`` in a random layout, named or (drawn, or ``positional``) positional."""
    lay = draw(layouts(mesh, dims))
    x = sa.asarray(a, dims=dims, mesh=mesh, layout=lay)
    pos = draw(st.booleans()) if positional is None else positional
    return as_kind(x, xp.Array) if pos and dims else x


# ============================================================================================== optimizers

OPTIMIZERS = {
    "sgd": lambda lr: sa.optim.SGD(lr=lr),
    "sgd_wd": lambda lr: sa.optim.SGD(lr=lr, weight_decay=0.3),
    "momentum": lambda lr: sa.optim.SGD(lr=lr, momentum=0.8, weight_decay=0.1),
    "nesterov": lambda lr: sa.optim.SGD(lr=lr, momentum=0.7, nesterov=True),
    "adam": lambda lr: sa.optim.Adam(lr=lr, b1=0.8, b2=0.9, eps=1e-3),
    "adamw": lambda lr: sa.optim.Adam(lr=lr, weight_decay=0.2, eps=1e-3),
}


def _reference(opt, p: np.ndarray, g: np.ndarray, s: dict, step: int) -> np.ndarray:
    """One step of ``opt``'s documented update in float64; ``s`` holds the moments (updated in place)."""
    lr = opt.lr(step) if callable(opt.lr) else opt.lr
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


_TOL = {"float64": 1e-9, "float32": 2e-5, "float16": 2e-5, "bfloat16": 2e-5}  # (16-bit: their float32 masters)


@st.composite
def _tree_case(draw):
    """A mesh, a dtype per leaf and the values of a tree {"w": (i, j), "p": [(k,)], "s": ()} (some empty)."""
    mesh = draw(meshes())
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    i, j, k = draw(st.integers(0, 7)), draw(st.integers(1, 5)), draw(st.integers(0, 9))
    dtypes = [draw(st.sampled_from(["float64", "float32", "float16", "bfloat16"])) for _ in range(3)]
    shapes = [(i, j), (k,), ()]
    return mesh, rng, dtypes, shapes


def _tree(draw, mesh, values, dtypes, kinds):
    """The tree of ``values`` (rounded to ``dtypes``) on ``mesh`` in random layouts; ``kinds``: positional or not."""
    dims = [("i", "j"), ("k",), ()]
    leaves = [
        draw(_placed(mesh, v.astype(_np_dtype(dt)), d, pos)) for v, dt, d, pos in zip(values, dtypes, dims, kinds)
    ]
    return {"w": leaves[0], "p": [leaves[1]], "s": leaves[2]}


def _leaves(tree) -> list:
    return [tree["w"], tree["p"][0], tree["s"]]


@fuzz(30, ENV)
@given(case=_tree_case(), data=st.data())
def test_fuzz_optimizers_match_numpy_and_resume_from_checkpoint(case, data, tmp_path_factory):
    mesh, rng, dtypes, shapes = case
    name = data.draw(st.sampled_from(sorted(OPTIMIZERS)))
    lr = data.draw(st.sampled_from([0.05, sa.optim.cosine_schedule(0.1, 4, warmup=1)]))
    opt = OPTIMIZERS[name](lr)
    clip = data.draw(st.sampled_from([None, 0.5, 100.0]))
    scaler = sa.optim.DynamicLossScale(init_scale=16.0) if clip is None and data.draw(st.booleans()) else None
    loss_scale = scaler.init() if scaler else None  # (the grads scaled by a power of 2: unscaled exactly)
    kinds = [data.draw(st.booleans()), True, False]  # the (k,) leaf positional, the 0-d one named
    start = [rng.standard_normal(s) for s in shapes]
    params = _tree(data.draw, mesh, start, dtypes, kinds)
    state = opt.init(params)
    ref = [
        v.astype(_np_dtype(dt)).astype(np.float32 if dt in ("float16", "bfloat16") else dt).astype(np.float64)
        for v, dt in zip(start, dtypes)
    ]
    moments: list[dict] = [{} for _ in ref]
    for step in range(1, 4):
        g_values = [rng.standard_normal(s) for s in shapes]
        grads = _tree(data.draw, mesh, g_values, dtypes, kinds)  # the grads in their own layouts
        g_ref = [v.astype(_np_dtype(dt)).astype(np.float64) for v, dt in zip(g_values, dtypes)]
        if clip is not None:
            grads, norm = sa.optim.clip_by_global_norm(grads, clip, return_norm=True)
            want = math.sqrt(sum(float((g * g).sum()) for g in g_ref))
            assert norm == pytest.approx(want, rel=1e-12)
            g_ref = [_f64(g) for g in _leaves(grads)]  # (the clipped grads, rounded to their dtypes)
        if scaler is None:
            params, state = opt.update(params, grads, state)
        else:
            scaled = _tree(data.draw, mesh, [v * loss_scale["scale"] for v in g_values], dtypes, kinds)
            before = [(type(a), a.layout) for a in _leaves(params)]
            params, state, loss_scale = scaler.apply(opt, params, scaled, state, loss_scale)
            assert loss_scale["finite"] is True
            assert [(type(a), a.layout) for a in _leaves(params)] == before
        ref = [_reference(opt, p, g, s, step) for p, g, s in zip(ref, g_ref, moments)]
    paths = ["['w']", "['p'][0]", "['s']"]
    for path, x, r, dt, kind in zip(paths, _leaves(params), ref, dtypes, kinds):
        assert x.dtype == _np_dtype(dt)
        assert type(x) is (xp.Array if kind and x.dims else sa.ShardArray)
        working = state["master"][path] if dt in ("float16", "bfloat16") else x
        assert type(working) is type(x) and working.layout == x.layout
        np.testing.assert_allclose(_f64(working), r, rtol=_TOL[dt], atol=_TOL[dt], err_msg=f"{name} {path} {dt}")
        np.testing.assert_allclose(_f64(x), r.astype(_np_dtype(dt)).astype(np.float64), rtol=2e-2, atol=2e-2)

    # save on this mesh, load onto another mesh and random layouts: the next step is the same
    path = tmp_path_factory.mktemp("opt") / "ck"
    sa.checkpoint.save(path, {"params": params, "state": state}, overwrite=True)
    mesh2 = data.draw(meshes())
    zeros = [np.zeros(s) for s in shapes]
    params2 = _tree(data.draw, mesh2, zeros, dtypes, kinds)
    loaded = sa.checkpoint.load(path, {"params": params2, "state": opt.init(params2)})
    g_values = [rng.standard_normal(s) for s in shapes]
    a, _ = opt.update(params, _tree(data.draw, mesh, g_values, dtypes, kinds), state)
    b, state_b = opt.update(loaded["params"], _tree(data.draw, mesh2, g_values, dtypes, kinds), loaded["state"])
    for x, y, dt in zip(_leaves(a), _leaves(b), dtypes):
        assert type(x) is type(y) and x.dtype == y.dtype
        np.testing.assert_allclose(_f64(x), _f64(y), rtol=_TOL[dt], atol=_TOL[dt])
    assert state_b["step"] == 4


# ============================================================================================== checkpoints

_CK_DTYPES = ("bfloat16", "float16", "bool", "int32", "uint8", "float64", "int64")


def _ck_values(rng, dtype: str, shape: tuple) -> np.ndarray:
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0, 100, shape).astype(dtype)
    return rng.standard_normal(shape).astype(_np_dtype(dtype))


_UPCAST = {"bfloat16": "float32", "float16": "float64", "bool": "int8", "int32": "int64", "uint8": "float32"}


@fuzz(25, ENV)
@given(src=meshes(), dst=meshes(), data=st.data())
def test_fuzz_checkpoint_reshards_every_dtype(src, dst, data, tmp_path_factory):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    dims = {0: (), 1: ("a",), 2: ("a", "b")}
    specs = []
    for n in range(data.draw(st.integers(1, 4))):
        dt = data.draw(st.sampled_from(_CK_DTYPES))
        d = dims[data.draw(st.integers(0, 2))]
        shape = tuple(data.draw(st.integers(0, 7)) for _ in d)
        specs.append((f"x{n}", dt, d, shape, _ck_values(rng, dt, shape)))
    tree = {"arrays": {k: data.draw(_placed(src, v, d)) for k, _, d, _, v in specs}, "step": 7, "tag": "run"}
    path = tmp_path_factory.mktemp("ck") / "ck"
    sa.checkpoint.save(path, tree, overwrite=True)
    target = {}
    for k, dt, d, shape, _ in specs:
        want = _UPCAST.get(dt, dt) if data.draw(st.booleans()) else dt
        zero = data.draw(_placed(dst, np.zeros(shape, _np_dtype(want)), d))
        target[k] = zero
    out = sa.checkpoint.load(path, {"arrays": target, "step": 0, "tag": ""})
    assert out["step"] == 7 and out["tag"] == "run"
    for k, _, _, _, v in specs:
        got, t = out["arrays"][k], target[k]
        assert type(got) is type(t) and got.dtype == t.dtype and got.layout == t.layout and got.mesh is dst
        np.testing.assert_array_equal(np.asarray(got.numpy()), v.astype(t.dtype))
    by_rules = sa.checkpoint.load(path, mesh=dst)  # the saved dtypes and kinds
    for k, _, _, _, v in specs:
        got = by_rules["arrays"][k]
        assert got.dtype == v.dtype and type(got) is type(tree["arrays"][k])
        np.testing.assert_array_equal(np.asarray(got.numpy()), v)


def test_checkpoint_missing_and_extra_keys_name_the_key(tmp_path):
    mesh = _mesh({"row": 2, "col": 2})
    x = sa.asarray(np.arange(6.0).reshape(2, 3), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
    sa.checkpoint.save(tmp_path / "ck", {"w": x, "opt": {"m": x, "step": 3}})
    with pytest.raises(sa.CheckpointError, match=r"\['opt'\]\['m'\]"):
        sa.checkpoint.load(tmp_path / "ck", {"w": x, "opt": {"step": 0}})
    with pytest.raises(sa.CheckpointError, match=r"\['opt'\]\['v'\]"):
        sa.checkpoint.load(tmp_path / "ck", {"w": x, "opt": {"m": x, "v": x, "step": 0}})
    with pytest.raises(sa.CheckpointError, match=r"'w'.*int32"):
        sa.checkpoint.load(
            tmp_path / "ck", {"w": sa.zeros(mesh, {"a": 2, "b": 3}, "int32"), "opt": {"m": x, "step": 0}}
        )


# ============================================================================================== sa.nn layers


@fuzz(25, ENV)
@given(mesh=meshes(), data=st.data())
def test_fuzz_nn_losses_and_layer_norm_on_split_layouts_equal_one_device(mesh, data):
    one = _mesh({"one": 1})
    dtype = data.draw(st.sampled_from(["float64", "float32"]))
    tol = 1e-9 if dtype == "float64" else 2e-4
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    b, s, v, d = (data.draw(st.integers(lo, 7)) for lo in (0, 1, 1, 1))
    logits = rng.standard_normal((b, s, v)).astype(dtype)
    targets = rng.integers(0, v, (b, s))
    x = rng.standard_normal((b, s, d)).astype(dtype)
    gain, bias = rng.standard_normal(d).astype(dtype), rng.standard_normal(d).astype(dtype)

    def run(m, place):
        lg = place(m, logits, ("batch", "seq", "vocab"))
        tg = place(m, targets, ("batch", "seq"))
        xs = [place(m, x, ("batch", "seq", "d_model")), place(m, gain, ("d_model",)), place(m, bias, ("d_model",))]

        def loss(t):
            ce = sa.nn.cross_entropy(t[0], tg)
            y = sa.nn.layer_norm(*t[1])
            return (ce * ce).sum() + (y * y * y).sum()

        value, grads = sa.value_and_grad(loss)((lg, xs))
        acc = sa.nn.accuracy(lg, tg).numpy() if b else None
        return [_f64(value), _f64(grads[0])] + [_f64(g) for g in grads[1]], acc

    want, acc_want = run(one, lambda m, a, dims: sa.asarray(a, dims=dims, mesh=m))
    got, acc = run(mesh, lambda m, a, dims: data.draw(_placed(m, a, dims, False)))
    for a, w in zip(got, want):
        np.testing.assert_allclose(a, w, rtol=tol, atol=tol)
    if b:
        assert abs(float(acc) - float(acc_want)) < 1e-12


_CFG = sa.nn.TransformerConfig(vocab=13, d_model=6, heads=3, d_kv=2, d_ff=10, n_layers=1, seq_len=5)
_BATCH = 6


def _train(mesh: sa.Mesh, strategy: str | None, steps: int = 2) -> list[float]:
    kwargs = {"batch": _BATCH} if strategy == "auto" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        params = sa.nn.init_transformer(_CFG, mesh, strategy=strategy, seed=1, **kwargs)
    rules = mesh.rules if strategy in (None, "auto") else sa.nn.strategy_rules(strategy, mesh)
    lay = {d: a for d, a in rules.items() if d in ("batch", "seq")}
    tokens, targets = sa.nn.data.pattern_batch(0, _BATCH, _CFG.seq_len, _CFG.vocab)
    tok = sa.asarray(tokens, dims=("batch", "seq"), mesh=mesh, layout=lay)
    tgt = sa.asarray(targets, dims=("batch", "seq"), mesh=mesh, layout=lay)
    opt = sa.optim.Adam(lr=0.01)
    state = opt.init(params)
    losses = []
    for _ in range(steps):
        loss, grads = sa.value_and_grad(lambda p: sa.nn.transformer_loss(p, tok, tgt, _CFG))(params)
        losses.append(float(loss.numpy()))
        params, state = opt.update(params, grads, state)
    return losses


@pytest.mark.parametrize(
    ("strategy", "shape"),
    [
        ("data", {"r": 3, "c": 2}),
        ("megatron", {"model": 3, "data": 2}),
        ("mesh2d", {"rows": 2, "cols": 3}),
        ("tesseract", {"row": 2, "col": 2, "dep": 2}),
        ("auto", {"a": 2, "b": 2}),
    ],
)
def test_transformer_strategies_train_as_one_device(strategy, shape, capsys):
    want = _train(sa.Mesh({"one": 1}), None)
    got = _train(sa.Mesh(shape), strategy)
    np.testing.assert_allclose(got, want, rtol=2e-5)


# ============================================================================================== regressions


def test_accuracy_of_all_hits_on_a_split_batch_is_exactly_one():
    """All positions hit on a batch split over both axes of a 2x2 mesh: 1.0, as NumPy's mean of the hits (the mean
    divided each device's partial count by the total before adding them: 0.9999999999999999)."""
    mesh = _mesh({"row": 2, "col": 2})
    logits = np.eye(4)[[0, 1, 2]][:, None, :].repeat(2, axis=1)  # (batch 3, seq 2, vocab 4)
    targets = logits.argmax(-1)
    lg = sa.asarray(logits, dims=("batch", "seq", "vocab"), mesh=mesh, layout={"batch": "col", "seq": "row"})
    tg = sa.asarray(targets, dims=("batch", "seq"), mesh=mesh, layout={"batch": "col", "seq": "row"})
    acc = sa.nn.accuracy(lg, tg)
    assert acc.dims == () and acc.dtype == np.float64
    assert float(acc.numpy()) == 1.0
    targets[0, 0] = 3
    tg = sa.asarray(targets, dims=("batch", "seq"), mesh=mesh, layout={"batch": ("row", "col")})
    assert float(sa.nn.accuracy(lg, tg).numpy()) == np.mean(logits.argmax(-1) == targets)


def test_saves_into_one_run_directory_never_replace_each_other(tmp_path, monkeypatch):
    """Two saves of a run directory that both picked the next number (the second computed it before the first
    committed) keep both checkpoints, the later one newest; the old commit replaced the first checkpoint and
    returned the same path for both."""
    mesh = _mesh({"row": 2, "col": 2})
    x = sa.ones(mesh, {"i": 5}, layout={"i": "col"})
    first = sa.checkpoint.save(tmp_path / "run", {"x": x, "k": 1}, keep=5)
    stale = sa.checkpoint.commit.next_in_run
    monkeypatch.setattr(sa.checkpoint.commit, "next_in_run", lambda run: first)  # as computed before the commit
    second = sa.checkpoint.save(tmp_path / "run", {"x": x * 2.0, "k": 2}, keep=5)
    monkeypatch.setattr(sa.checkpoint.commit, "next_in_run", stale)
    assert first != second and first.name == "ckpt-00000001" and second.name == "ckpt-00000002"
    assert sa.checkpoint.load(first, {"x": x, "k": 0})["k"] == 1
    newest = sa.checkpoint.load(tmp_path / "run", {"x": x, "k": 0})
    assert newest["k"] == 2 and (newest["x"].numpy() == 2.0).all()


def test_concurrent_saves_into_one_run_directory(tmp_path):
    """Threads saving into one run directory with keep=2: every save commits its own checkpoint, a checkpoint
    another save pruned first is skipped (the old prune raised FileNotFoundError, reported as a failed commit)."""
    mesh = _mesh({"p": 3, "q": 2})
    x = sa.ones(mesh, {"i": 5}, layout={"i": "p"})
    paths, errors = [], []

    def save(k: int) -> None:
        try:
            paths.append(sa.checkpoint.save(tmp_path / "run", {"x": x * float(k), "k": k}, keep=2))
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=save, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(set(paths)) == 6
    left = {p.name for p in (tmp_path / "run").iterdir()}
    assert max(paths).name in left and 2 <= len(left) and left <= {p.name for p in paths}
    newest = sa.checkpoint.load(tmp_path / "run", {"x": x, "k": 0})
    assert (newest["x"].numpy() == newest["k"]).all()
