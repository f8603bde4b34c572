"""Trees pair leaves by key path; optimizers keep low-precision parameters finite and check what they get."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import shardarray as sa
from helpers import MESH_SHAPES

SHAPES = MESH_SHAPES + [{"p": 3, "q": 2}]


def _arr(mesh, values, layout=None):
    axis = mesh.axis_names[0]
    return sa.asarray(np.asarray(values), dims=("a",), mesh=mesh, layout={"a": axis} if layout is None else layout)


# ------------------------------------------------------------------ trees: pairing by key path
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_tree_map_pairs_dict_leaves_by_key_not_position(shape):
    mesh = sa.Mesh(shape)
    a = {"w": _arr(mesh, [1.0, 2.0, 3.0]), "b": _arr(mesh, [10.0, 20.0, 30.0])}
    b = {"b": _arr(mesh, [100.0, 200.0, 300.0]), "w": _arr(mesh, [1000.0, 2000.0, 3000.0])}
    out = sa.tree.tree_map(lambda x, y: x + y, a, b)
    assert list(out) == ["w", "b"]  # the first tree's structure and key order
    np.testing.assert_array_equal(out["w"].numpy(), [1001.0, 2002.0, 3003.0])
    np.testing.assert_array_equal(out["b"].numpy(), [110.0, 220.0, 330.0])


def test_tree_map_pairs_namedtuples_by_field_and_nested_lists_by_index():
    mesh = sa.Mesh({"row": 2, "col": 2})
    Pair = namedtuple("Pair", "x y")
    a = {"p": Pair(_arr(mesh, [1.0]), [_arr(mesh, [2.0]), _arr(mesh, [3.0])]), "q": _arr(mesh, [4.0])}
    b = {"q": _arr(mesh, [40.0]), "p": Pair(_arr(mesh, [10.0]), [_arr(mesh, [20.0]), _arr(mesh, [30.0])])}
    out = sa.tree.tree_map(lambda x, y: x + y, a, b)
    assert isinstance(out["p"], Pair) and list(out) == ["p", "q"]
    got = [float(out["p"].x.numpy()[0]), float(out["p"].y[0].numpy()[0]), float(out["p"].y[1].numpy()[0]),
           float(out["q"].numpy()[0])]
    assert got == [11.0, 22.0, 33.0, 44.0]


@pytest.mark.parametrize("first, other, path, words", [
    (lambda x: {"w": x, "b": x}, lambda x: {"w": x}, "['b']", ("no key 'b'",)),
    (lambda x: {"w": x, "b": x}, lambda x: {"w": x, "b": x, "c": x}, "['c']", ("no key 'c'",)),
    (lambda x: {"w": x, "b": x}, lambda x: {"w": [x], "b": x}, "['w']", ("an array", "a list")),
    (lambda x: {"w": x, "b": (x,)}, lambda x: {"w": x, "b": (x, x)}, "['b'][1]", ("nothing", "an array")),
    (lambda x: {"w": x, "b": (x, x)}, lambda x: {"w": x, "b": [x, x]}, "['b']", ("a tuple", "a list")),
    (lambda x: {"w": x, "b": (x, x)}, lambda x: {"w": x, "b": (x,)}, "['b'][1]", ("nothing",)),
], ids=["missing-key", "extra-key", "subtree-vs-leaf", "longer", "list-vs-tuple", "shorter"])
def test_trees_that_differ_name_the_first_differing_path(first, other, path, words):
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = _arr(mesh, [1.0, 2.0])
    with pytest.raises(sa.DTypeError) as info:
        sa.tree.tree_map(lambda p, q: p, first(x), other(x))
    msg = str(info.value)
    assert f"tree 1{path}" in msg, msg
    for w in words:
        assert w in msg, msg


def test_tree_leaves_like_names_the_path_of_a_non_array_leaf():
    mesh = sa.Mesh({"all": 4})
    x = _arr(mesh, [1.0, 2.0, 3.0, 4.0])
    with pytest.raises(sa.DTypeError, match=r"grads\['layer1.ln1.gain'\].*str"):
        sa.tree.tree_leaves_like({"layer1.ln1.gain": x}, {"layer1.ln1.gain": "oops"}, "grads", "params")


# ------------------------------------------------------------------ optimizers: pairing by key path
@pytest.mark.parametrize("opt", [sa.optim.Adam(lr=0.1), sa.optim.SGD(lr=0.1, momentum=0.9), sa.optim.SGD(lr=0.1)],
                         ids=["adam", "sgd-momentum", "sgd"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_optimizer_pairs_params_and_grads_by_key(opt, shape):
    """Grads in another key order (e.g. rebuilt by a user) must update the parameter of the same name."""
    mesh = sa.Mesh(shape)
    w0, b0 = np.array([1.0, 2.0, 3.0]), np.array([-1.0, 0.5, 4.0])
    gw, gb = np.array([0.0, 0.0, 0.0]), np.array([5.0, -5.0, 1.0])
    params = {"w": _arr(mesh, w0), "b": _arr(mesh, b0)}
    state = opt.init(params)
    grads_reordered = {"b": _arr(mesh, gb), "w": _arr(mesh, gw)}
    grads_ordered = {"w": _arr(mesh, gw), "b": _arr(mesh, gb)}
    new_a, state_a = opt.update(params, grads_reordered, state)
    new_b, state_b = opt.update(params, grads_ordered, state)
    assert list(new_a) == ["w", "b"]
    np.testing.assert_array_equal(new_a["w"].numpy(), w0)  # a zero gradient does not move w
    for k in ("w", "b"):
        np.testing.assert_array_equal(new_a[k].numpy(), new_b[k].numpy())


def test_adam_state_in_another_key_order_is_paired_by_key():
    mesh = sa.Mesh({"row": 2, "col": 2})
    params = {"w": _arr(mesh, [1.0, 2.0]), "b": _arr(mesh, [3.0, 4.0])}
    opt = sa.optim.Adam(lr=0.1)
    state = opt.init(params)
    params, state = opt.update(params, {"w": _arr(mesh, [0.0, 0.0]), "b": _arr(mesh, [1.0, 1.0])}, state)
    swapped = {**state, "m": {"b": state["m"]["b"], "w": state["m"]["w"]},
               "v": {"b": state["v"]["b"], "w": state["v"]["w"]}}
    zero = {"w": _arr(mesh, [0.0, 0.0]), "b": _arr(mesh, [0.0, 0.0])}
    p1, s1 = opt.update(params, zero, state)
    p2, s2 = opt.update(params, zero, swapped)
    for k in ("w", "b"):
        np.testing.assert_array_equal(p1[k].numpy(), p2[k].numpy())
        np.testing.assert_array_equal(s1["m"][k].numpy(), s2["m"][k].numpy())
    np.testing.assert_array_equal(p1["w"].numpy(), [1.0, 2.0])  # w never had a gradient


# ------------------------------------------------------------------ low precision
def _mlp_grads(rng, n):
    """Realistic gradients: small (1e-3 .. 1e-5), some tiny enough that their squares underflow in float16."""
    return [rng.standard_normal(n) * s for s in (1e-3, 1e-4, 3e-5)]


@pytest.mark.parametrize("shape", [{"d": 1}, {"row": 2, "col": 2}, {"p": 3, "q": 2}], ids=str)
@pytest.mark.parametrize("opt", [sa.optim.Adam(lr=1e-3, weight_decay=0.01), sa.optim.SGD(lr=0.5, momentum=0.9)],
                         ids=["adam", "sgd-momentum"])
def test_float16_parameters_stay_finite_and_track_float32(shape, opt):
    mesh = sa.Mesh(shape)
    axis = mesh.axis_names[-1]
    rng = np.random.default_rng(0)
    n = 7
    w0 = rng.standard_normal(n)

    def tree(values, dtype):
        return {"w": sa.asarray(values.astype(dtype), dims=("a",), mesh=mesh, layout={"a": axis})}

    p16, p32 = tree(w0, np.float16), tree(w0, np.float32)
    s16, s32 = opt.init(p16), opt.init(p32)
    for step in range(6):
        for g in _mlp_grads(rng, n):
            p16, s16 = opt.update(p16, tree(g, np.float16), s16)
            p32, s32 = opt.update(p32, tree(g.astype(np.float16).astype(np.float32), np.float32), s32)
    w16, w32 = p16["w"].numpy(), p32["w"].numpy()
    assert w16.dtype == np.float16 and np.isfinite(w16).all(), w16
    # float16 keeps ~3 decimal digits: the float16 run stays within a few ulps of the float32 run
    np.testing.assert_allclose(w16.astype(np.float32), w32, rtol=4e-3, atol=4e-3)
    moments = [s16["m"]["w"], s16["v"]["w"]] if "m" in s16 else [s16["velocity"]["w"]]
    assert all(m.dtype == np.float32 for m in moments)


def test_float16_adam_moments_are_float32_from_init():
    mesh = sa.Mesh({"row": 2, "col": 2})
    p = {"w": sa.ones(mesh, {"a": 5}, dtype="float16", layout={"a": "row"}),
         "x": sa.ones(mesh, {"a": 5}, dtype="float64", layout={"a": "col"})}
    state = sa.optim.Adam().init(p)
    assert state["m"]["w"].dtype == np.float32 and state["v"]["w"].dtype == np.float32
    assert state["m"]["x"].dtype == np.float64
    assert state["m"]["w"].layout == {"a": ("row",)}


def test_moment_dtype_rule_is_on_size_not_a_float16_special_case():
    assert sa.optim.moment_dtype("float16") == np.float32
    assert sa.optim.moment_dtype("float32") == np.float32
    assert sa.optim.moment_dtype("float64") == np.float64
    try:
        import ml_dtypes
    except ImportError:  # pragma: no cover
        return
    assert sa.optim.moment_dtype(ml_dtypes.bfloat16) == np.float32


def test_fused_predicate_accepts_float32_moments_for_float16_params(monkeypatch):
    from shardarray import optim
    from shardarray.ops.fused import dispatch as fused

    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.ones(mesh, {"a": 4}, dtype="float16", layout={"a": "row"})
    state = sa.optim.Adam().init({"x": x})
    monkeypatch.setattr(fused, "kernels_for", lambda *a: True)
    assert optim._fused(x, state["m"]["x"], state["v"]["x"])
    m16 = sa.zeros(mesh, {"a": 4}, dtype="float16", layout={"a": "row"})
    assert not optim._fused(x, m16, m16)


# ------------------------------------------------------------------ wrong state, wrong grads
def _setup():
    mesh = sa.Mesh({"row": 2, "col": 2})
    params = {"layer1.ln1.gain": sa.ones(mesh, {"d_model": 4}, layout={"d_model": "col"}),
              "embed": sa.ones(mesh, {"vocab": 6, "d_model": 4}, layout={"vocab": "row"})}
    return mesh, params


def test_sgd_state_into_adam_names_the_missing_key_and_the_fix():
    _, params = _setup()
    state = sa.optim.SGD(lr=0.1).init(params)
    with pytest.raises(sa.DTypeError, match=r"'m'.*opt.init\(params\)"):
        sa.optim.Adam().update(params, params, state)
    with pytest.raises(sa.DTypeError, match=r"'velocity'.*opt.init\(params\)"):
        sa.optim.SGD(lr=0.1, momentum=0.9).update(params, params, sa.optim.Adam().init(params))


def test_state_of_another_tree_names_the_path():
    mesh, params = _setup()
    other = {"embed": params["embed"]}
    state = sa.optim.Adam().init(other)
    with pytest.raises(sa.DTypeError, match=r"\['layer1.ln1.gain'\].*opt.init\(params\)"):
        sa.optim.Adam().update(params, params, state)


def test_moments_of_other_sizes_name_the_path():
    mesh, params = _setup()
    state = sa.optim.Adam().init(params)
    state["m"] = {**state["m"], "embed": sa.zeros(mesh, {"vocab": 7, "d_model": 4})}
    with pytest.raises(sa.DimensionError, match=r"state\['m'\]\['embed'\].*'vocab': 7.*opt.init\(params\)"):
        sa.optim.Adam().update(params, params, state)


def test_grads_of_another_tree_name_the_first_differing_path():
    mesh, params = _setup()
    state = sa.optim.Adam().init(params)
    with pytest.raises(sa.DTypeError, match=r"grads\['layer1.ln1.gain'\].*no key"):
        sa.optim.Adam().update(params, {"embed": params["embed"]}, state)
    bad = {**params, "embed": sa.ones(mesh, {"vocab": 5, "d_model": 4})}
    with pytest.raises(sa.DimensionError, match=r"grads\['embed'\]"):
        sa.optim.Adam().update(params, bad, state)


def test_state_that_is_not_a_dict():
    _, params = _setup()
    with pytest.raises(sa.DTypeError, match="opt.init"):
        sa.optim.Adam().update(params, params, None)


# ------------------------------------------------------------------ hyper-parameters
@pytest.mark.parametrize("make, words", [
    (lambda: sa.optim.Adam(b1=1.0), ("b1", "1.0", "[0, 1)")),
    (lambda: sa.optim.Adam(b2=-0.1), ("b2", "-0.1", "[0, 1)")),
    (lambda: sa.optim.Adam(eps=0.0), ("eps", "> 0")),
    (lambda: sa.optim.Adam(lr=-1e-3), ("lr", "-0.001", ">= 0")),
    (lambda: sa.optim.Adam(lr="fast"), ("lr", "'fast'", "callable")),
    (lambda: sa.optim.Adam(weight_decay=-1.0), ("weight_decay", "-1.0", ">= 0")),
    (lambda: sa.optim.Adam(b1=float("nan")), ("b1", "nan")),
    (lambda: sa.optim.SGD(momentum=1.0), ("momentum", "1.0", "[0, 1)")),
    (lambda: sa.optim.SGD(lr=float("inf")), ("lr", "inf")),
], ids=["b1", "b2", "eps", "lr", "lr-str", "wd", "nan", "momentum", "lr-inf"])
def test_bad_hyperparameters_fail_at_construction(make, words):
    with pytest.raises(sa.ShardArrayError) as info:
        make()
    assert isinstance(info.value, (ValueError, TypeError))
    for w in words:
        assert w in str(info.value), str(info.value)


@pytest.mark.parametrize("bad", [float("nan"), -1e-3, float("inf")])
def test_a_schedule_returning_a_bad_lr_fails_at_update(bad):
    _, params = _setup()
    opt = sa.optim.Adam(lr=lambda step: bad)
    state = opt.init(params)
    with pytest.raises(sa.ArgumentError, match=r"schedule.*step 1"):
        opt.update(params, params, state)


# ------------------------------------------------------------------ the transformer API
CFG = sa.nn.TransformerConfig(vocab=16, d_model=8, heads=2, d_kv=4, d_ff=16, n_layers=2, seq_len=6)


def _model(cfg=CFG, shape=None):
    shape = shape or {"rows": 2, "cols": 2}
    mesh = sa.Mesh(shape, rules=sa.nn.strategy_rules("mesh2d", shape))
    params = sa.nn.init_transformer(cfg, mesh, seed=0)
    tok = np.arange(4 * cfg.seq_len).reshape(4, cfg.seq_len) % cfg.vocab
    return mesh, params, sa.asarray(tok, dims=("batch", "seq"), mesh=mesh)


@pytest.mark.parametrize("other, words", [
    (dict(n_layers=1), ("params['layer1.ln1.gain']", "missing", "n_layers=2", "init_transformer")),
    (dict(n_layers=3), ("params['layer2.ln1.gain']", "not in the config", "n_layers=2")),
    (dict(vocab=32), ("params['embed']", "'vocab': 32", "'vocab': 16", "vocab=16")),
    (dict(seq_len=8), ("params['pos']", "'seq': 8", "'seq': 6", "seq_len=6")),
], ids=["fewer-layers", "more-layers", "vocab", "seq_len"])
def test_params_of_another_config_name_the_first_mismatch(other, words):
    cfg_other = sa.nn.TransformerConfig(**{**CFG.__dict__, **other})
    mesh, params, tokens = _model(cfg_other)
    mesh, _, tokens = _model(CFG)
    with pytest.raises(sa.DimensionError) as info:
        sa.nn.transformer_loss(params, tokens, tokens, CFG)
    for w in words:
        assert w in str(info.value), str(info.value)


def test_params_that_are_not_a_dict_of_arrays():
    mesh, params, tokens = _model()
    with pytest.raises(sa.DTypeError, match="params must be a dict"):
        sa.nn.transformer_loss(list(params.values()), tokens, tokens, CFG)
    with pytest.raises(sa.DTypeError, match=r"params\['pos'\] is a ndarray"):
        sa.nn.transformer_loss({**params, "pos": params["pos"].numpy()}, tokens, tokens, CFG)


@pytest.mark.parametrize("make, error, words", [
    (lambda m, t: t.numpy(), sa.DTypeError, ("tokens", "ndarray", "sa.asarray")),
    (lambda m, t: t.astype("float32"), sa.DTypeError, ("tokens", "float32", "integer")),
    (lambda m, t: t.rename({"seq": "time"}), sa.DimensionError, ("tokens", "'time'", "('batch', 'seq')")),
    (lambda m, t: sa.asarray(np.zeros((4, 8), int), dims=("batch", "seq"), mesh=m), sa.DimensionError,
     ("tokens", "seq 8", "seq_len 6")),
    (lambda m, t: t + 16, sa.DimensionError, ("tokens", "vocab 16", "found values from")),
    (lambda m, t: t - 1, sa.DimensionError, ("tokens", "[0, 16)")),
], ids=["numpy", "float", "dims", "longer", "id>=vocab", "negative"])
def test_bad_tokens_name_the_argument(make, error, words):
    mesh, params, tokens = _model()
    bad = make(mesh, tokens)
    with pytest.raises(error) as info:  # an id's range: at the call, or on GPUs at the loss read
        float(sa.nn.transformer_loss(params, bad, tokens, CFG))
    for w in words:
        assert w in str(info.value), str(info.value)


def test_bad_targets_name_the_argument():
    mesh, params, tokens = _model()
    with pytest.raises(sa.DimensionError, match=r"targets.*vocab 16"):
        float(sa.nn.transformer_loss(params, tokens, tokens + 16, CFG))
    short = sa.asarray(np.zeros((2, 6), int), dims=("batch", "seq"), mesh=mesh)
    with pytest.raises(sa.DimensionError, match=r"targets.*'batch': 2.*tokens.*'batch': 4"):
        sa.nn.transformer_loss(params, tokens, short, CFG)


def test_init_transformer_checks_its_arguments():
    mesh = sa.Mesh({"rows": 2, "cols": 2})
    with pytest.raises(sa.DTypeError, match=r"seed=None.*integer"):
        sa.nn.init_transformer(CFG, mesh, strategy="mesh2d", seed=None)
    with pytest.raises(sa.DTypeError, match=r"sa.Mesh\(\{'rows': 2, 'cols': 2\}\)"):
        sa.nn.init_transformer(CFG, {"rows": 2, "cols": 2}, strategy="mesh2d")
    with pytest.raises(sa.LayoutError, match=r"'mesh3d'.*did you mean 'mesh2d'"):
        sa.nn.init_transformer(CFG, mesh, strategy="mesh3d")
    with pytest.raises(sa.DTypeError, match=r"dtype='int32'.*float"):
        sa.nn.init_transformer(CFG, mesh, strategy="mesh2d", dtype="int32")


def test_transformer_config_checks_sizes():
    with pytest.raises(sa.DimensionError, match=r"d_model.*0"):
        sa.nn.TransformerConfig(d_model=0)
    with pytest.raises(sa.DimensionError, match=r"heads.*-2"):
        sa.nn.TransformerConfig(heads=-2)
    with pytest.raises(sa.ArgumentError, match=r"eps.*0.0"):
        sa.nn.TransformerConfig(eps=0.0)


def test_pattern_batch_takes_a_seed_or_a_generator():
    a = sa.nn.data.pattern_batch(3, 4, 8, 16)
    b = sa.nn.data.pattern_batch(np.random.default_rng(3), 4, 8, 16)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    with pytest.raises(sa.DimensionError, match=r"seq_len.*0"):
        sa.nn.data.pattern_batch(0, 4, 0, 16)
    with pytest.raises(sa.DimensionError, match=r"vocab.*-1"):
        sa.nn.data.pattern_batch(0, 4, 8, -1)
    with pytest.raises(sa.DTypeError, match=r"rng.*'abc'"):
        sa.nn.data.pattern_batch("abc", 4, 8, 16)


def _train(dtype, steps=6):
    cfg = sa.nn.TransformerConfig(vocab=16, d_model=16, heads=2, d_kv=8, d_ff=32, n_layers=1, seq_len=8)
    mesh = _model(cfg)[0]
    params = sa.nn.init_transformer(cfg, mesh, seed=0, dtype=dtype)
    opt = sa.optim.Adam(lr=1e-2)
    state = opt.init(params)
    rng = np.random.default_rng(0)
    step = sa.value_and_grad(sa.nn.transformer_loss)
    losses = []
    for _ in range(steps):
        tok, tgt = sa.nn.data.pattern_batch(rng, 8, cfg.seq_len, cfg.vocab)
        loss, grads = step(params, sa.asarray(tok, dims=("batch", "seq"), mesh=mesh),
                           sa.asarray(tgt, dims=("batch", "seq"), mesh=mesh), cfg)
        params, state = opt.update(params, grads, state)
        losses.append(float(loss))
    return losses, params


def test_a_float16_transformer_trains_like_float32():
    l16, p16 = _train("float16")
    l32, p32 = _train("float32")
    for name, p in p16.items():
        assert p.dtype == np.float16 and np.isfinite(p.numpy()).all(), name
        np.testing.assert_allclose(p.numpy().astype(np.float32), p32[name].numpy(), rtol=0.02, atol=0.02)
    np.testing.assert_allclose(l16, l32, rtol=0.01)
