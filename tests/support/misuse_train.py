"""Misuse cases of training: trees, optimizers, the transformer API and data, the example and bench CLIs."""

from __future__ import annotations

import numpy as np

import shardarray as sa
from misuse import Case, CliCase

CFG = sa.nn.TransformerConfig(vocab=16, d_model=8, heads=2, d_kv=4, d_ff=16, n_layers=2, seq_len=6)
SMALL = sa.nn.TransformerConfig(vocab=16, d_model=8, heads=2, d_kv=4, d_ff=16, n_layers=1, seq_len=6)


def _mesh():
    return sa.Mesh({"rows": 2, "cols": 2}, rules=sa.nn.strategy_rules("mesh2d", {"rows": 2, "cols": 2}))


def _x():
    return sa.ones(sa.Mesh({"row": 2, "col": 2}), {"a": 3}, layout={"a": "row"})


def _params(cfg=CFG):
    return sa.nn.init_transformer(cfg, _mesh(), seed=0)


def _tokens(batch=4, seq=6, offset=0, dtype=np.int64):
    ids = (np.arange(batch * seq).reshape(batch, seq) % 16 + offset).astype(dtype)
    return sa.asarray(ids, dims=("batch", "seq"), mesh=_mesh())


def _loss(params=None, tokens=None, targets=None):
    return lambda: sa.nn.transformer_loss(_params() if params is None else params(),
                                          _tokens() if tokens is None else tokens(),
                                          _tokens() if targets is None else targets(), CFG)


def _opt_params():
    mesh = sa.Mesh({"row": 2, "col": 2})
    return {"layer1.ln1.gain": sa.ones(mesh, {"d_model": 4}, layout={"d_model": "col"}),
            "embed": sa.ones(mesh, {"vocab": 6, "d_model": 4}, layout={"vocab": "row"})}


def _update(opt, state_of, grads_of=lambda p: p):
    def call():
        p = _opt_params()
        return opt.update(p, grads_of(p), state_of(p))

    return call


def _sized_moment(state):
    state["m"] = {**state["m"], "embed": sa.zeros(sa.Mesh({"row": 2, "col": 2}), {"vocab": 7, "d_model": 4})}
    return state


def _no_cupy(*argv: str) -> tuple[str, ...]:
    """Run ``argv`` (a module's or a script's) as on a machine without CuPy: ``import cupy`` fails."""
    if argv[0] == "-m":
        run, target, rest = "runpy.run_module", argv[1], argv[2:]
    else:
        run, target, rest = "runpy.run_path", argv[0], argv[1:]
    code = (f"import runpy, sys; sys.modules['cupy'] = None; sys.argv = [{target!r}, *{list(rest)!r}]; "
            f"{run}({target!r}, run_name='__main__')")
    return ("-c", code)


TRAIN = "examples/train_transformer.py"
BENCH = ("-m", "shardarray.bench")

CASES = [
    # ---- trees: paired by key path, the first differing path named
    Case("tree-map-missing-key", lambda: sa.tree.tree_map(lambda a, b: a, {"w": _x(), "b": _x()}, {"w": _x()}),
         sa.DTypeError, ("tree 1['b']", "no key 'b'"), ("the same keys",)),
    Case("tree-map-list-vs-tuple", lambda: sa.tree.tree_map(lambda a, b: a, {"w": (_x(), _x())}, {"w": [_x(), _x()]}),
         sa.DTypeError, ("tree 1['w']", "a tuple of 2", "a list of 2"), ("structure of the first",)),
    Case("tree-map-leaf-vs-subtree", lambda: sa.tree.tree_map(lambda a, b: a, {"w": _x()}, {"w": {"x": _x()}}),
         sa.DTypeError, ("tree 1['w']", "an array", "a dict with keys ['x']"), ("structure of the first",)),
    Case("tree-map-shorter", lambda: sa.tree.tree_map(lambda a, b: a, [_x(), _x()], [_x()]),
         sa.DTypeError, ("tree 1[1]", "nothing"), ("the same keys, containers and lengths",)),
    Case("tree-flatten-non-array", lambda: sa.tree.tree_flatten({"w": _x(), "b": "no"}),
         sa.DTypeError, ("params['b']", "str"), ("separate arguments",)),
    # ---- optimizer hyper-parameters, checked at construction
    Case("adam-b1-one", lambda: sa.optim.Adam(b1=1.0), sa.ArgumentError, ("b1", "1.0"), ("[0, 1)",)),
    Case("adam-b2-negative", lambda: sa.optim.Adam(b2=-0.5), sa.ArgumentError, ("b2", "-0.5"), ("[0, 1)",)),
    Case("adam-eps-zero", lambda: sa.optim.Adam(eps=0.0), sa.ArgumentError, ("eps", "0.0"), ("> 0", "1e-8")),
    Case("adam-lr-negative", lambda: sa.optim.Adam(lr=-1e-3), sa.ArgumentError, ("lr", "-0.001"), (">= 0",)),
    Case("adam-lr-string", lambda: sa.optim.Adam(lr="3e-4"), sa.DTypeError, ("lr", "'3e-4'"), ("callable",)),
    Case("adam-weight-decay-negative", lambda: sa.optim.Adam(weight_decay=-0.1), sa.ArgumentError,
         ("weight_decay", "-0.1"), (">= 0",)),
    Case("sgd-momentum-one", lambda: sa.optim.SGD(momentum=1.0), sa.ArgumentError, ("momentum", "1.0"), ("[0, 1)",)),
    Case("cosine-total-steps-zero", lambda: sa.optim.cosine_schedule(1e-3, 0), sa.ArgumentError,
         ("total_steps", "0"), (">= 1",)),
    Case("cosine-warmup-past-the-run", lambda: sa.optim.cosine_schedule(1e-3, 10, warmup=20), sa.ArgumentError,
         ("total_steps=10", "warmup=20", "longer than the run"), ("warmup <= total_steps",)),
    Case("schedule-returns-nan", _update(sa.optim.Adam(lr=lambda step: float("nan")), sa.optim.Adam().init),
         sa.ArgumentError, ("schedule", "nan", "step 1"), ("finite number >= 0",)),
    # ---- optimizer state and grads that do not belong to the params
    Case("sgd-state-into-adam", _update(sa.optim.Adam(), sa.optim.SGD().init), sa.DTypeError,
         ("'m'", "another optimizer's state"), ("state = opt.init(params)",)),
    Case("adam-state-into-sgd", _update(sa.optim.SGD(momentum=0.9), sa.optim.Adam().init), sa.DTypeError,
         ("'velocity'",), ("state = opt.init(params)",)),
    Case("state-of-another-tree", _update(sa.optim.Adam(), lambda p: sa.optim.Adam().init({"embed": p["embed"]})),
         sa.DTypeError, ("state['m']['layer1.ln1.gain']", "no key"), ("state = opt.init(params)",)),
    Case("moments-of-other-sizes", _update(sa.optim.Adam(), lambda p: _sized_moment(sa.optim.Adam().init(p))),
         sa.DimensionError, ("state['m']['embed']", "'vocab': 7"), ("state = opt.init(params)",)),
    Case("state-none", _update(sa.optim.Adam(), lambda p: None), sa.DTypeError, ("NoneType",),
         ("state = opt.init(params)",)),
    Case("grads-of-another-tree", _update(sa.optim.Adam(), sa.optim.Adam().init, lambda p: {"embed": p["embed"]}),
         sa.DTypeError, ("grads['layer1.ln1.gain']", "no key"), ("sa.value_and_grad",)),
    Case("grads-of-other-sizes",
         _update(sa.optim.Adam(), sa.optim.Adam().init,
                 lambda p: {**p, "embed": sa.ones(sa.Mesh({"row": 2, "col": 2}), {"vocab": 5, "d_model": 4})}),
         sa.DimensionError, ("grads['embed']", "'vocab': 5"), ("sa.value_and_grad",)),
    # ---- the transformer: config, init, loss, data
    Case("config-d-model-zero", lambda: sa.nn.TransformerConfig(d_model=0), sa.DimensionError,
         ("d_model=0",), (">= 1",)),
    Case("config-eps-zero", lambda: sa.nn.TransformerConfig(eps=0.0), sa.ArgumentError, ("eps=0.0",), ("> 0",)),
    Case("init-seed-none", lambda: sa.nn.init_transformer(CFG, _mesh(), seed=None), sa.DTypeError,
         ("seed=None",), ("an integer such as 0",)),
    Case("init-mesh-dict", lambda: sa.nn.init_transformer(CFG, {"rows": 2, "cols": 2}, strategy="mesh2d"),
         sa.DTypeError, ("dict",), ("sa.Mesh({'rows': 2, 'cols': 2})",)),
    Case("init-unknown-strategy", lambda: sa.nn.init_transformer(CFG, _mesh(), strategy="mesh3d"), sa.LayoutError,
         ("'mesh3d'",), ("did you mean 'mesh2d'",)),
    Case("init-int-dtype", lambda: sa.nn.init_transformer(CFG, _mesh(), dtype="int32"), sa.DTypeError,
         ("dtype='int32'",), ("'float32'",)),
    Case("loss-params-of-fewer-layers", _loss(params=lambda: _params(SMALL)), sa.DimensionError,
         ("params['layer1.ln1.gain']", "n_layers=2"), ("sa.nn.init_transformer(cfg, mesh)",)),
    Case("loss-params-of-another-vocab",
         _loss(params=lambda: _params(sa.nn.TransformerConfig(**{**CFG.__dict__, "vocab": 32}))), sa.DimensionError,
         ("params['embed']", "'vocab': 32", "vocab=16"), ("sa.nn.init_transformer(cfg, mesh)",)),
    Case("loss-params-list", _loss(params=lambda: list(_params().values())), sa.DTypeError,
         ("params", "list"), ("sa.nn.init_transformer",)),
    Case("loss-tokens-numpy", _loss(tokens=lambda: _tokens().numpy()), sa.DTypeError,
         ("tokens", "ndarray"), ("sa.asarray(tokens, dims=",)),
    Case("loss-tokens-float", _loss(tokens=lambda: _tokens(dtype=np.float32)), sa.DTypeError,
         ("tokens", "float32"), ('tokens.astype("int64")',)),
    Case("loss-tokens-longer-than-seq-len", _loss(tokens=lambda: _tokens(seq=8)), sa.DimensionError,
         ("tokens", "seq 8", "seq_len 6"), ("seq_len=8",)),
    Case("loss-token-id-over-vocab", _loss(tokens=lambda: _tokens(offset=3)), sa.DimensionError,
         ("tokens", "vocab 16", "to 18"), ("[0, 16)",)),
    Case("loss-targets-other-batch", _loss(targets=lambda: _tokens(batch=2)), sa.DimensionError,
         ("'batch': 2", "'batch': 4"), ("one target per token",)),
    Case("pattern-batch-seq-len-zero", lambda: sa.nn.data.pattern_batch(0, 4, 0, 16), sa.DimensionError,
         ("seq_len=0",), (">= 1",)),
    Case("pattern-batch-bad-rng", lambda: sa.nn.data.pattern_batch("abc", 4, 8, 16), sa.DTypeError,
         ("'abc'",), ("integer seed",)),
    # ---- the example: refused at argument parsing, before any training
    CliCase("train-steps-zero", (TRAIN, "--steps", "0"), ("--steps", "0"), (">= 1",)),
    CliCase("train-batch-zero", (TRAIN, "--batch", "0"), ("--batch",), (">= 1",)),
    CliCase("train-eval-batch-negative", (TRAIN, "--eval-batch", "-4"), ("--eval-batch", "-4"), (">= 1",)),
    CliCase("train-lr-nan", (TRAIN, "--lr", "nan"), ("--lr", "nan"), ("finite number >= 0",)),
    CliCase("train-mesh-size-zero", (TRAIN, "--mesh", "rows=0,cols=2"), ("--mesh", "'rows=0,cols=2'"),
            ("sizes >= 1",)),
    CliCase("train-cupy-missing", _no_cupy(TRAIN, "--backend", "cupy", "--steps", "1", "--plot", "", "--quiet"),
            ("'cupy' backend",), ("pip install 'shardarray[cuda12]'", "'shardarray[cuda13]'")),
    # ---- the bench CLI: every subcommand
    CliCase("bench-cupy-missing", _no_cupy(*BENCH, "matmul", "--backend", "cupy", "--quiet"),
            ("'cupy' backend",), ("pip install 'shardarray[cuda12]'", "'shardarray[cuda13]'")),
    CliCase("bench-matmul-negative-m", (*BENCH, "matmul", "--m", "-5"), ("--m", "-5"), (">= 1",)),
    CliCase("bench-matmul-bad-mesh", (*BENCH, "matmul", "--mesh", "row=2,col"), ("--mesh", "'row=2,col'"),
            ("axis=size",)),
    CliCase("bench-matmul-mesh-axes", (*BENCH, "matmul", "--mesh", "x=2,y=2"), ("--mesh", "'x': 2"),
            ("row=q,col=q",)),
    CliCase("bench-plan-batch-zero", (*BENCH, "plan", "--batch", "0"), ("--batch", "0"), (">= 1",)),
    CliCase("bench-plan-unknown-hardware", (*BENCH, "plan", "--hardware", "tpu"), ("--hardware", "'tpu'"),
            ("a100",)),
]
